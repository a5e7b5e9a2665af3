"""What a person reads: the summary tables, explanations, and the paper's tables reproduced."""
