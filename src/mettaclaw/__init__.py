"""mettaclaw: a neural-symbolic agent runtime on the Hyperon stack."""

__version__ = "0.1.0"
