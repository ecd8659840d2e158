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
