"""The objects every part of logicpipe shares: records, trajectories, the task, stage files."""
