"""biaseval: measure gender bias in machine translation at scale."""

__version__ = "0.1.0"
