"""Support for tests/test_cuda_lowering.py: a pytest plugin (``plugin.py``), not tests."""
