"""The course on a Kubernetes cluster with Zero to JupyterHub (``python -m autograder k8s --out DIR``).

The bundle is generated from ``course_config.py``, like the one-machine hub (``autograder/hub``): the same per-user
limits (``COURSE["hub"]``, read through ``autograder.hub.limits.UserLimits``), the same roles (students without the
``autograder`` package, a non-root grading account, formgrader as a hub service for the ``formgrade-<course>`` group,
ngshare as the exchange), and the class graded in shards into PostgreSQL (``autograde --shard i/n``).

* ``cluster``   what the bundle is made for: names, images, shards (the command's options) and each student's
  resources from ``course_config.py``
* ``security``  the pod and container security settings: the students' (non-root, no token, no capabilities) and the
  grading pods' (what bubblewrap's user namespaces need, nothing privileged)
* ``values``    the Helm values of the Zero to JupyterHub chart (chart version pinned)
* ``images``    the two Dockerfiles: the students' image (no ``autograder``) and the grading image
* ``exchange``  ngshare as an external hub service, its own volume
* ``formgrader`` formgrader as an external hub service, the course's volume
* ``gradebook`` PostgreSQL, the gradebook every grading pod writes to
* ``network``   the NetworkPolicies: a student pod reaches the hub and the exchange, nothing else
* ``grading``   an Indexed Job per assignment: one shard of the class per index
* ``bundle``    every file written into the output folder, with its README
"""
