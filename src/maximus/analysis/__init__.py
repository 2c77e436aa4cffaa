"""Pure functions from stored runs to the figures a user sees."""
