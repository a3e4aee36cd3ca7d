"""The one package that writes the store: sources, versions and atomic publish of a source version."""

from .models import Access, PublishResult, SourceRow
from .store import Store

__all__ = ["Access", "PublishResult", "SourceRow", "Store"]
