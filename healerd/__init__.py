"""healerd: a local daemon that keeps a fleet of web scrapers healthy by itself."""

__version__ = "0.1.0"
