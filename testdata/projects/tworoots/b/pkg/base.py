class Base:
    """Not a Dataset: b's Items is read in the main process only."""
