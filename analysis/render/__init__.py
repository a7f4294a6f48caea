"""How results are shown: markdown snippets, matplotlib figures, the HTML page, the
latency-exceedance figures."""
