"""Import paths of the classic TensorFlow tutorials."""
