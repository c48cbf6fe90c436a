# Students' image (UNTESTED here): the course's pinned environment, without the autograder package.
FROM quay.io/jupyter/base-notebook:python-3.11
COPY requirements.txt requirements-nodeps.txt /tmp/
# ngshare-exchange with --no-deps: it pins jupyter-core<4.11.2, which JupyterLab 4 cannot use (requirements-nodeps.txt)
RUN pip install --no-cache-dir -r /tmp/requirements.txt && pip install --no-cache-dir --no-deps -r /tmp/requirements-nodeps.txt \
 && python -m ipykernel install --sys-prefix --name attention-course --display-name "Python 3 (어텐션 과목)" \
      --env KERAS_BACKEND torch
