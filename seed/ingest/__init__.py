"""Getting the demo's metadata into the graph: DataHub's own sources first, SDK emitters for what no source writes."""
