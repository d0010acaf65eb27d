"""``tf.contrib.factorization``: TF 1.x's graph for k-means clustering (``KMeans``).

The graph follows TF 1.15's clustering_ops: the centers live in a variable of unknown shape that
``init_op`` fills (random rows of the inputs, an initial-clusters tensor, or a callable), then
``training_op`` runs a full Lloyd iteration or a mini-batch update. TF's NearestNeighbors kernel
is a minimum over the distance matrix here; k-means++ and k-MC2 initialisation are not built.
"""
from __future__ import annotations

from .. import dtypes
from ..framework.ops import control_dependencies, convert_to_tensor
from ..nn import l2_normalize
from ..ops.array_index_ops import gather, unique
from ..ops.array_join_ops import concat
from ..ops.array_ops import (identity, ones, ones_like, placeholder_with_default, reshape, shape,
                             size, transpose, zeros)
from ..ops.array_scatter_ops import unsorted_segment_sum
from ..ops.check_ops import assert_equal, assert_positive
from ..ops.cond_ops import cond
from ..ops.control_flow_ops import group, no_op
from ..ops.math_ops import add_n, cast, equal, matmul, maximum, reciprocal, square
from ..ops.random_ops import random_uniform
from ..ops.reduction_ops import argmin, reduce_min, reduce_sum
from ..ops.state_ops import scatter_add
from ..variables import Variable, assign

SQUARED_EUCLIDEAN_DISTANCE = "squared_euclidean"
COSINE_DISTANCE = "cosine"
RANDOM_INIT = "random"
KMEANS_PLUS_PLUS_INIT = "kmeans_plus_plus"
KMC2_INIT = "kmc2"
CLUSTERS_VAR_NAME = "clusters"

__all__ = ["KMeans", "SQUARED_EUCLIDEAN_DISTANCE", "COSINE_DISTANCE", "RANDOM_INIT",
           "KMEANS_PLUS_PLUS_INIT", "KMC2_INIT", "CLUSTERS_VAR_NAME"]


class KMeans:
    """Creates the graph for k-means clustering (TF 1.x's ``tf.contrib.factorization.KMeans``)."""

    def __init__(self, inputs, num_clusters, initial_clusters=RANDOM_INIT,
                 distance_metric=SQUARED_EUCLIDEAN_DISTANCE, use_mini_batch=False,
                 mini_batch_steps_per_iteration=1, random_seed=0,
                 kmeans_plus_plus_num_retries=2, kmc2_chain_length=200):
        if distance_metric not in (SQUARED_EUCLIDEAN_DISTANCE, COSINE_DISTANCE):
            raise ValueError(f"KMeans: unknown distance_metric {distance_metric!r}; expected "
                             f"{SQUARED_EUCLIDEAN_DISTANCE!r} or {COSINE_DISTANCE!r}")
        if isinstance(initial_clusters, str) and initial_clusters != RANDOM_INIT:
            raise NotImplementedError(
                f"KMeans: initial_clusters={initial_clusters!r} is not available in tfjupyter; "
                f"use {RANDOM_INIT!r}, a tensor of initial centers or a callable")
        if use_mini_batch and mini_batch_steps_per_iteration != 1:
            raise NotImplementedError("KMeans: mini_batch_steps_per_iteration > 1 is not "
                                      "available in tfjupyter")
        self._inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        self._num_clusters = num_clusters
        self._initial_clusters = initial_clusters
        self._distance_metric = distance_metric
        self._use_mini_batch = use_mini_batch
        self._seed = random_seed

    def _clusters_l2_normalized(self) -> bool:
        # Full-batch cosine k-means keeps its centers unit length; mini-batch updates do not.
        return self._distance_metric == COSINE_DISTANCE and not self._use_mini_batch

    def _distances(self, inp, clusters):
        if self._distance_metric == COSINE_DISTANCE:
            # Both sides are unit length here, so 1 - x.c is TF's cosine distance.
            return 1 - matmul(inp, clusters, transpose_b=True)
        return (reduce_sum(square(inp), 1, keepdims=True)
                - 2 * matmul(inp, clusters, transpose_b=True)
                + transpose(
                    reduce_sum(square(clusters), 1, keepdims=True)))

    def training_graph(self):
        """TF 1.4-1.15's 7 results: (all_scores, cluster_idx, scores,
        cluster_centers_initialized, cluster_centers_var, init_op, training_op); the first
        three are tuples with one entry per input tensor."""
        if isinstance(self._initial_clusters, str) or callable(self._initial_clusters):
            num_clusters = convert_to_tensor(self._num_clusters)
        else:
            self._initial_clusters = convert_to_tensor(self._initial_clusters)
            # A static count where the shape says it (TF folds shape(constant)[0] the same way).
            num_clusters = (self._initial_clusters.shape.as_list()[0]
                            if self._initial_clusters.shape.rank else None)
            if num_clusters is None:
                num_clusters = shape(self._initial_clusters)[0]
            num_clusters = convert_to_tensor(num_clusters)
        dtype = self._inputs[0].dtype
        empty = placeholder_with_default(
            zeros([0], dtype=dtype), shape=None)
        centers_var = Variable(empty, name=CLUSTERS_VAR_NAME, validate_shape=False)
        initialized = Variable(False, dtype=dtypes.bool, name="initialized")
        counts = (Variable(ones([num_clusters], dtype=dtypes.int64))
                  if self._use_mini_batch else None)
        init_op = self._init_op(num_clusters, centers_var, initialized)

        inputs, centers = self._inputs, centers_var
        if self._distance_metric == COSINE_DISTANCE:
            inputs = [l2_normalize(inp, axis=1) for inp in inputs]
            if not self._clusters_l2_normalized():
                centers = l2_normalize(centers_var, axis=1)
        all_scores = [self._distances(inp, centers) for inp in inputs]
        cluster_idx = [argmin(d, 1) for d in all_scores]
        # TF's NearestNeighbors clamps the expanded squared distance at 0.
        scores = [maximum(reduce_min(d, 1), 0) for d in all_scores]
        if self._use_mini_batch:
            training_op = self._mini_batch_training_op(inputs, cluster_idx, centers_var, counts)
        else:
            training_op = self._full_batch_training_op(inputs, num_clusters, cluster_idx,
                                                       centers_var)
        return (tuple(all_scores), tuple(cluster_idx), tuple(scores), initialized,
                centers_var, init_op, training_op)

    def _init_op(self, num_clusters, centers_var, initialized):
        """Chooses the initial centers once: a no-op (checking ``initialized``) after that."""
        num_selected = shape(centers_var)[0]
        num_remaining = num_clusters - num_selected
        num_data = add_n([shape(inp)[0] for inp in self._inputs])

        def random_rows():
            # TF samples rows with replacement; with fewer rows than centers it takes them all.
            def sample():
                indices = random_uniform(
                    reshape(num_remaining, [-1]), minval=0,
                    maxval=cast(num_data, dtypes.int64), seed=self._seed,
                    dtype=dtypes.int64)
                return gather(concat(self._inputs, 0), indices)
            return cond(num_data <= num_remaining,
                                         lambda: concat(self._inputs, 0), sample)

        def initialize():
            with control_dependencies(
                    [assert_positive(num_remaining)]):
                if isinstance(self._initial_clusters, str):  # RANDOM_INIT
                    new_centers = random_rows()
                elif callable(self._initial_clusters):
                    new_centers = self._initial_clusters(self._inputs, num_remaining)
                else:
                    with control_dependencies([assert_equal(
                            num_remaining, shape(self._initial_clusters)[0])]):
                        new_centers = identity(self._initial_clusters)
                if self._distance_metric == COSINE_DISTANCE:
                    new_centers = l2_normalize(new_centers, axis=1)
                all_centers = cond(
                    equal(num_selected, 0), lambda: new_centers,
                    lambda: concat([centers_var, new_centers], 0))
                assigned = assign(centers_var, all_centers, validate_shape=False)
                return cond(
                    equal(num_clusters - shape(assigned)[0], 0),
                    lambda: assign(initialized, True), no_op)

        return cond(
            equal(num_remaining, 0),
            lambda: assert_equal(initialized, True), initialize)

    @staticmethod
    def _mini_batch_training_op(inputs, cluster_idx_list, centers, counts):
        """Moves each touched center to the running mean of all points ever assigned to it:
        c += (sum(x) - k c) / (n + k) for k new points, n earlier ones."""
        update_ops = []
        for inp, cluster_idx in zip(inputs, cluster_idx_list):
            unique_ids, unique_idx = unique(reshape(cluster_idx, [-1]))
            num_unique = size(unique_ids)
            old_counts = gather(counts, unique_ids)
            old_centers = gather(centers, unique_ids)
            count_updates = unsorted_segment_sum(
                ones_like(unique_idx, dtype=counts.dtype), unique_idx, num_unique)
            center_updates = unsorted_segment_sum(inp, unique_idx, num_unique)
            column = [-1, 1]
            center_updates -= (cast(reshape(count_updates, column), inp.dtype)
                               * old_centers)
            learning_rate = reciprocal(
                cast(old_counts + count_updates, inp.dtype))
            center_updates *= reshape(learning_rate, column)
            # TF's graph leaves the reads and the updates unordered (a race); read first.
            with control_dependencies([old_counts.op, old_centers.op]):
                update_ops += [scatter_add(counts, unique_ids, count_updates),
                               scatter_add(centers, unique_ids, center_updates)]
        return group(*update_ops)

    def _full_batch_training_op(self, inputs, num_clusters, cluster_idx_list, centers):
        """One Lloyd iteration: each center becomes the mean of the points assigned to it."""
        sums, sizes = [], []
        for inp, cluster_idx in zip(inputs, cluster_idx_list):
            sums.append(unsorted_segment_sum(inp, cluster_idx, num_clusters))
            row_ones = ones(reshape(shape(inp)[0], [-1]), inp.dtype)
            sizes.append(unsorted_segment_sum(
                reshape(row_ones, [-1, 1]), cluster_idx, num_clusters))
        epsilon = convert_to_tensor(1e-6, dtype=inputs[0].dtype)
        new_centers = add_n(sums) / (add_n(sizes) + epsilon)
        if self._clusters_l2_normalized():
            new_centers = l2_normalize(new_centers, axis=1)
        return assign(centers, new_centers, validate_shape=False)
