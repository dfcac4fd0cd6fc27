/*
 * doctor.h - `alex doctor PROGRAM [ARGS...]`: can ALEX interpose PROGRAM?
 *
 * Reads PROGRAM and the libraries it would load as ELF files (libelf) and
 * never runs any of them.  Exit status for scripts: 0 = ALEX can interpose
 * it, 1 = it cannot (the report says why), 2 = could not tell or an error.
 */
#ifndef ALEX_DOCTOR_H
#define ALEX_DOCTOR_H

/* argv[0] is "doctor"; argv[argc] is NULL. */
int alex_doctor_main(int argc, char **argv);

#endif
