"""The real-browser tests: headless Chromium on JupyterLab with nbgrader's lab extension (fixtures in conftest.py)."""
