/* Stand-in for bcryptprimitives.dll, which Rust's std imports (ProcessPrng, to seed
 * HashMap) and Wine 8 does not ship. Built with mingw by `make test-windows` and placed
 * in the test Wine prefix only; never shipped with dfdu. */
#include <windows.h>

/* RtlGenRandom, exported by advapi32 under this name. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Fills `data` with random bytes; like the real one it always succeeds. */
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        SystemFunction036(data, chunk);
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
