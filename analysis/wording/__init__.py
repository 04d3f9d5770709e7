"""Every sentence the reports say, in one layer: how a number or a name is written
(numbers), the verdict's phases (phases) and the findings and headlines (findings). The
text, HTML and JSON views take their words from here, and verdict_check reads them back."""
