# nbgrader reads this file; every setting lives in course_config.py.
c = get_config()  # noqa: F821
load_subconfig("course_config.py")  # noqa: F821
