"""The tests against a real JupyterHub (fixtures in conftest.py, which marks every test here ``hub``)."""
