"""The biLM itself: character encoder, projected LSTMs, scalar mix, LM loss."""
