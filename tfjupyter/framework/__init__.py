"""Graph-building core: dtypes, shapes, devices, the op registry, Graph/Operation/Tensor."""
