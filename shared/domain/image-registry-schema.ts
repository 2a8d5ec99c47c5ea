import { z } from 'zod';

/** POST /api/v3/registries: a container registry (the reference's fields). */
export const createImageRegistryBody = z.strictObject({
  url: z.string().refine((value) => /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,252}$/.test(value), {
    message: 'must be a registry host (and optional path), e.g. registry.example.com',
  }),
  isPublic: z.boolean(),
  username: z.string().max(256).optional(),
  password: z.string().max(4096).optional(),
  email: z.string().max(256).optional(),
});

export type CreateImageRegistryBody = z.output<typeof createImageRegistryBody>;
