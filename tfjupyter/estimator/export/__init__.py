"""``tf.estimator.export``: serving input receivers and export outputs."""
from .export import (ServingInputReceiver, TensorServingInputReceiver,  # noqa: F401
                     build_parsing_serving_input_receiver_fn,
                     build_raw_serving_input_receiver_fn)
from .export_output import (ClassificationOutput, ExportOutput, PredictOutput,  # noqa: F401
                            RegressionOutput)

__all__ = ["ServingInputReceiver", "TensorServingInputReceiver",
           "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn",
           "ExportOutput", "PredictOutput", "ClassificationOutput", "RegressionOutput"]
