/*-------------------------------------------------------------------------
 *
 * registry_server.h
 *	  The registry's own process: members' calls applied by a background
 *	  worker of the registry server (registry_server.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_REGISTRY_SERVER_H
#define SNOWID_REGISTRY_SERVER_H

#include "fmgr.h"

extern Size snowid_server_shmem_size(void);
extern void snowid_server_shmem_startup(void);
extern PGDLLEXPORT void snowid_server_main(Datum main_arg);

#endif							/* SNOWID_REGISTRY_SERVER_H */
