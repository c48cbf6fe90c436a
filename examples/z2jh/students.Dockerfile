# Students' image (UNTESTED here): the course's pinned environment, without the autograder package.
FROM quay.io/jupyter/base-notebook:python-3.11
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt ngshare_exchange \
 && python -m ipykernel install --sys-prefix --name attention-course --display-name "Python 3 (어텐션 과목)" \
      --env KERAS_BACKEND torch
