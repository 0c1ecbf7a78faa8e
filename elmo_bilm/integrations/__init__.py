"""Optional integrations (extras): spaCy, flair, Ray Data corpus embedding."""
