"""The device and its host: §1's environment, the drive's health (smartctl, nvme-cli JSON) and
its samples during a burst, and the safety checks before any write."""
