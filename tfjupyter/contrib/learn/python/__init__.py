"""tensorflow.contrib.learn.python (the import path TF 1.x examples use)."""
