"""What the run loop needs while it measures: the manifest of a results tree, what makes a good
repetition, the faults it names, the helper process on its pipe, fleet output and the host
ceiling."""
