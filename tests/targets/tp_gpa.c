/* Target (c): functions fetched with cuGetProcAddress_v2.
 *   tp_gpa [default|ptds] [self]  */
#include "gpa_resolve.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT;
    int self = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "ptds") == 0)
            flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
        else if (strcmp(argv[i], "self") == 0)
            self = 1;
    }
    struct wl_api api;
    CUfunction f;
    if (gpa_resolve(&api, flags, self) || wl_setup(&api, &f) || wl_run(&api, f, 3, 1))
        return 1;
    wl_print_fake_counts();
    printf("ok\n");
    return 0;
}
