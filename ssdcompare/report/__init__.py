"""The HTML report and its charts: one chart spec drawn as SVG or as a matplotlib figure."""
