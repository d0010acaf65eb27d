"""SyncReplicasOptimizer: synchronous SGD across between-graph replicas, with backup workers.

Each step, every worker applies its gradients to one ConditionalAccumulator per variable (on the
variable's ps) tagged with the global step it computed them at, then waits for a token from
the sync token queue. The chief's queue runner takes the mean of the first
``replicas_to_aggregate`` fresh gradients (stale ones, computed at an older global step, are
dropped by the accumulators), applies it, and enqueues one token per replica carrying the new
global step. With ``total_num_replicas > replicas_to_aggregate`` the slowest workers' gradients
are simply not waited for: they are backup workers ("Revisiting Distributed Synchronous SGD",
Chen et al., 2016).

Unlike TensorFlow's, training here ends cleanly: the waits are cancellable steps, so closing the
chief's session stops its queue runner even while it waits for gradients that never come.
"""
from __future__ import annotations

from typing import List, Optional

from ..framework import dtypes
from ..framework.ops import GraphKeys, Operation, Tensor, colocate_with, control_dependencies, device, name_scope
from ..ops import array_ops, control_flow_ops
from ..ops.data_flow_ops import ConditionalAccumulator, FIFOQueue
from ..variables import Variable, assign, global_variables, report_uninitialized_variables
from .basic_session_run_hooks import SessionRunHook
from .optimizers import Optimizer
from .queue_runner import QueueRunner

__all__ = ["SyncReplicasOptimizer"]


class SyncReplicasOptimizer(Optimizer):
    def __init__(self, opt: Optimizer, replicas_to_aggregate: int,
                 total_num_replicas: Optional[int] = None, variable_averages=None,
                 variables_to_average=None, use_locking: bool = False, name: str = "sync_replicas"):
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        if replicas_to_aggregate < 1 or total_num_replicas < 1:
            raise ValueError("SyncReplicasOptimizer: replicas_to_aggregate and total_num_replicas "
                             "must be at least 1")
        super().__init__(use_locking, name)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._gradients_applied = False
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulators: List[ConditionalAccumulator] = []
        self.local_step_init_op: Optional[Operation] = None
        self.ready_for_local_init_op: Optional[Tensor] = None
        self.chief_init_op: Optional[Operation] = None

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name: Optional[str] = None):
        """The worker's train op: push gradients, then wait for the next step's token."""
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        if self._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradients() may be called only once")
        self._global_step = global_step
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        if not grads_and_vars:
            raise ValueError("No gradients to apply")
        step_dtype = global_step.dtype

        # The local step lives on this worker (colocated with a no-op made here), not on a ps.
        local_anchor = control_flow_ops.no_op(name="sync_local_anchor")
        with colocate_with(local_anchor):
            self._local_step = Variable(0, trainable=False, dtype=step_dtype,
                                        collections=[GraphKeys.LOCAL_VARIABLES],
                                        name="sync_rep_local_step")
        self.local_step_init_op = assign(self._local_step, global_step).op
        # As TensorFlow: the chief's init includes its own local step (a Supervisor runs
        # chief_init_op as the chief's local_init_op, then checks every variable is ready), and
        # a worker's local init waits until the global variables (global_step above all, which
        # the local step copies) have been initialized by the chief.
        chief_init = [self.local_step_init_op]
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())

        train_ops, aggregated = [], []
        with name_scope(None), name_scope(self._name):
            for grad, var in grads_and_vars:
                with device(var.device):
                    accumulator = ConditionalAccumulator(
                        grad.dtype, shape=var.get_shape(), shared_name=var.name + "/grad_accum")
                    train_ops.append(accumulator.apply_grad(grad, local_step=self._local_step))
                    aggregated.append(accumulator.take_grad(self._replicas_to_aggregate))
                    self._accumulators.append(accumulator)
            with device(global_step.device), name_scope(""):
                update_op = self._opt.apply_gradients(list(zip(aggregated, [v for _, v in grads_and_vars])),
                                                      global_step)
                self._sync_token_queue = FIFOQueue(-1, step_dtype, shapes=[[]], name="sync_token_q",
                                                   shared_name="sync_token_q")
                dummy_queue = FIFOQueue(1, dtypes.int32, shapes=[[]], name="dummy_queue",
                                        shared_name="dummy_queue")
                with control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue()
                train_op = assign(self._local_step, token).op
                with control_dependencies([update_op]):
                    tokens = array_ops.fill([self._tokens_per_step], global_step)
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with control_dependencies([sync_op]):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._chief_queue_runner = QueueRunner(dummy_queue, [sync_op])
            for accumulator, (_, var) in zip(self._accumulators, grads_and_vars):
                with device(var.device):
                    chief_init.append(accumulator.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = control_flow_ops.group(*chief_init)
        self._gradients_applied = True
        return train_op

    def get_chief_queue_runner(self) -> QueueRunner:
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens: int = -1) -> Operation:
        """Puts ``num_tokens`` tokens (default: replicas_to_aggregate) in the queue, so that the
        workers can do their first step."""
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < self._tokens_per_step:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                             f"{self._tokens_per_step} (needed)")
        if num_tokens <= 0:
            return control_flow_ops.no_op(name="no_init_tokens")
        with device(self._global_step.device), name_scope(""):
            tokens = array_ops.fill([num_tokens], self._global_step)
            return self._sync_token_queue.enqueue_many((tokens,))

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> "SessionRunHook":
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the local-step init on every worker; on the chief, the accumulators' init, the
    initial tokens and the queue runner that applies the aggregated gradients."""

    def __init__(self, optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int):
        self._optimizer = optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self):
        opt = self._optimizer
        if not opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradients should be called before "
                             "using the hook.")
        # The chief's init op includes the local step's init (as TensorFlow's hook).
        self._local_init_op = opt.chief_init_op if self._is_chief else opt.local_step_init_op
        if self._is_chief:
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
            # At the end, one more token per replica releases every worker still waiting for
            # the next step, so that it sees the final global step and stops (TF's hang).
            self._release_op = opt.get_init_tokens_op(opt._tokens_per_step)

    def after_create_session(self, session, coord):
        session.run(self._local_init_op)
        if self._is_chief:
            session.run(self._init_tokens_op)
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)

    def end(self, session):
        if self._is_chief:
            session.run(self._release_op)
