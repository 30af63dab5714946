/*
 * A library whose constructor calls into the program that loads it
 * (races_prog's loader case): the constructor runs while dlopen holds the
 * loader's lock, and the call it makes reaches CUDA.
 */
void races_in_ctor(void);

__attribute__((constructor)) static void races_ctor(void)
{
    races_in_ctor();
}
