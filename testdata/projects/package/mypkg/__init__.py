from .data import Pairs

__all__ = ["Pairs"]
