"""Getting metadata into the graph: DataHub's own sources first, SDK emitters for the rest."""
