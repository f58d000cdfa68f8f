"""One configuration: ``recall.yaml``'s layers, how they lie over each other, and the shape every layer must have."""
