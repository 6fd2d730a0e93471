/*-------------------------------------------------------------------------
 *
 * rmgr.h
 *	  snowid's custom WAL resource manager (rmgr.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_RMGR_H
#define SNOWID_RMGR_H

extern void snowid_rmgr_init(void);

#endif							/* SNOWID_RMGR_H */
