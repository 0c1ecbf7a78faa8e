"""Helpers shared by several tasks."""
