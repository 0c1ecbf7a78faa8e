"""Shared helpers: errors, atomic outputs, line reading."""
