"""The sandbox's inside: the code that runs in the student's process and in the warm processes it is forked from.

One job per module: ``wire`` (frames, shared with the grader), ``values`` (Python values in frames), ``monitor``
(the forbidden-routine watch), ``routines`` (the labels it reports, which the grader's rules name), ``proxies``
(the other contract functions during a graded call), ``serve`` (cells and calls), ``memory`` (a call's allowance of
address space, the grader's bounded children's too), ``lane`` (a lane's warm process and the submission's child),
``nursery`` (one warm process for all lanes), ``linux`` (namespaces, mounts, capabilities, keyrings through libc).
Nothing here imports ``autograder``: the folder is copied whole into the sandbox and started there as
``python -I FOLDER ...`` (``__main__``).
"""
