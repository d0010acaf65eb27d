"""Control-flow ops on a GPU device: their CPU kernels with every argument in host memory. The
op only runs its functions' plans, whose ops are placed (GPUs included) and copied to by the
executor as any plan's; the predicate and iteration counts stay on the host."""
from . import on_host

on_host("If", "While", "WhileGrad", "CaseCheck")
