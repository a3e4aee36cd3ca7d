"""One pure parser per upstream format: `parse(file: SourceFile) -> Iterator[Record]`."""
