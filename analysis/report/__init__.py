"""The whole report from the sections' snippets and facts, two trees compared, a fleet's hosts
side by side, and the sample report."""
