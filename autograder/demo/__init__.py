"""The demo class: a simulated course run through nbgrader's real exchange (the README's main job)."""
