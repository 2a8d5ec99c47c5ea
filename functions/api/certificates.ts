import { z } from 'zod';
import {
  createCertificateAuthority,
  deleteCertificateAuthority,
  getCertificateAuthority,
  getCertificateView,
  listCertificateAuthorityViews,
  listCertificateViews,
} from '../../shared/commands/certificates.js';
import { createCertificateAuthorityBody } from '../../shared/domain/certificate-schema.js';
import { httpApi, jsonRequest, reply, routesOf } from '../../shared/http/api.js';
import {
  certificateAuthorityListView,
  certificateAuthorityView,
  certificateView,
  createdCertificateAuthority,
} from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('certificates');

/**
 * The fleet's certificate authorities and the certificates issued to agents (the reference's certificate
 * API, without ever returning a private key).
 */
export const routes = [
  route({
    method: 'POST',
    path: '/api/v3/certificates/ca',
    auth: 'admin',
    summary: 'Create a CA: self-signed, or imported from a Kubernetes Secret (k8s-secret)',
    request: jsonRequest(createCertificateAuthorityBody, { example: examples.certificateAuthority }),
    responses: { 201: createdCertificateAuthority },
    handler: async ({ body }) => reply.created(await createCertificateAuthority(body)),
  }),
  route({
    method: 'GET',
    path: '/api/v3/certificates/ca',
    auth: 'viewer',
    summary: 'List CAs',
    responses: { 200: certificateAuthorityListView },
    handler: async () => reply.ok({ cas: await listCertificateAuthorityViews() }),
  }),
  route({
    method: 'GET',
    path: '/api/v3/certificates/ca/{name}',
    auth: 'viewer',
    summary: 'Read a CA (its certificate; the key never leaves fogbridge)',
    responses: { 200: certificateAuthorityView },
    handler: async ({ param }) => reply.ok(await getCertificateAuthority(param('name'))),
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/certificates/ca/{name}',
    auth: 'admin',
    summary: 'Delete a CA that has signed nothing still stored',
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteCertificateAuthority(param('name'));
      return reply.noContent();
    },
  }),
  route({
    method: 'GET',
    path: '/api/v3/certificates',
    auth: 'viewer',
    summary: 'List the certificates issued to agents',
    responses: { 200: z.object({ certificates: z.array(certificateView) }).strict() },
    handler: async () => reply.ok({ certificates: await listCertificateViews() }),
  }),
  route({
    method: 'GET',
    path: '/api/v3/certificates/{name}',
    auth: 'viewer',
    summary: 'Read an issued certificate (without its key)',
    responses: { 200: certificateView },
    handler: async ({ param }) => reply.ok(await getCertificateView(param('name'))),
  }),
];

export const handler = httpApi(routes);
