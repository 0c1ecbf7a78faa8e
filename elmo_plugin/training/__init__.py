"""Trainer callbacks, a checkpointer and a scheduler for the biLM and the task models."""

from elmo_plugin.training.exact_recovery import ExactRecovery
from elmo_plugin.training.optimizer_state import OptimizerState
from elmo_plugin.training.reduce_on_plateau import ReduceOnPlateauScheduler
from elmo_plugin.training.run_progress import RunProgress
from elmo_plugin.training.safe_checkpointer import SafeCheckpointer
from elmo_plugin.training.validate_before_training import ValidateBeforeTraining
