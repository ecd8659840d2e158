"""Golden inputs from the seeds (DOMAIN.md), shared by the tests that use them."""

# seed 000 L8292-8332 (hpmstat -r -g 10 before LSA) and L8352-8392 (after)
SLB_BEFORE_LSA = {
    "PM_IERAT_MISS": 20894033,
    "PM_DSLB_MISS": 72329260,
    "PM_ISLB_MISS": 15710,
    "PM_SLB_MISS": 72344970,
    "PM_RUN_INST_CMPL": 5584383071,
    "PM_RUN_CYC": 66322682987,
}
SLB_AFTER_LSA = {
    "PM_IERAT_MISS": 189529,
    "PM_DSLB_MISS": 25347,
    "PM_ISLB_MISS": 15090,
    "PM_SLB_MISS": 40437,
    "PM_RUN_INST_CMPL": 2371507258,
    "PM_RUN_CYC": 66319381743,
}


# seed 000 L8280-8335: "Example 4-11 hpmstat before LSA is enabled", the report as AIX printed it
# (blank lines dropped), for tests that need a whole hpmstat capture
HPMSTAT_BEFORE_LSA = """\
#hpmstat -r -g 10 20
Execution time (wall clock time): 20.010013996 seconds
Group: 10
Counting mode: user+kernel+hypervisor+runlatch
Counting duration: 160.115119955 seconds
 PM_IERAT_MISS (IERAT Reloaded  (Miss))                      :        20894033
 PM_DSLB_MISS (Data SLB misses)                              :        72329260
 PM_ISLB_MISS (Instruction SLB misses)                       :           15710
 PM_SLB_MISS (SLB misses)                                    :        72344970
 PM_RUN_INST_CMPL (Run instructions completed)               :      5584383071
 PM_RUN_CYC (Run cycles)                                     :     66322682987
Normalization base: time
Counting mode: user+kernel+hypervisor+runlatch
 Derived metric group: Translation
 [   ] % DSLB_Miss_Rate per inst                             :           1.295 %
 [   ] IERAT miss rate (%)                                   :           0.374 %
 [   ] % ISLB miss rate per inst                             :           0.000 %
 Derived metric group: General
 [   ] Run cycles per run instruction                        :          11.876
 [   ] MIPS                                                  :          34.877 MIPS
"""
