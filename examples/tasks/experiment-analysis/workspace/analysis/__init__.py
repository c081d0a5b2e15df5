"""Analysis of the shop's online experiments."""
