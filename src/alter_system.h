/*-------------------------------------------------------------------------
 *
 * alter_system.h
 *	  The ALTER SYSTEM hook on snowid's layout parameters (alter_system.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWID_ALTER_SYSTEM_H
#define SNOWID_ALTER_SYSTEM_H

extern void snowid_alter_system_init(void);

#endif							/* SNOWID_ALTER_SYSTEM_H */
