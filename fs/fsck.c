/* fsck.c placeholder */
#include "fs_i.h"
