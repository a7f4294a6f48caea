t	what
1795921155.216622	fio of recovery-4s rep 1 exiting
1795921156.058585	checking that writing to /dev/nvme0n1 is still safe
1795921163.655346	the idle left of the planned 8 s
