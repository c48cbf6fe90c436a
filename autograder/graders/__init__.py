"""Hidden graders: everything that judges. Never released to students."""
import os

os.environ.setdefault("KERAS_BACKEND", "torch")
