/*-------------------------------------------------------------------------
 *
 * pool_worker.h
 *	  The pool worker: the registry worker's part in pools -- asking the
 *	  registry for ranges of the pools this server draws from, reporting
 *	  the ranges it holds, and giving unused tails back at shutdown.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_POOL_WORKER_H
#define SNOWID_POOL_WORKER_H

/* pool_worker.c, on the registry worker's connection */
/* ask (the holder of the node) for ranges and report; !ask: report only */
extern bool snowid_pools_serve(int node, const char *start, bool ask,
							   char **error);
extern void snowid_pools_give_back(int node, const char *start,
								   bool connected);

#endif							/* SNOWID_POOL_WORKER_H */
