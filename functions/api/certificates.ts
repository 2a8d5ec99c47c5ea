import { z } from 'zod';
import {
  createCertificate,
  createCertificateAuthority,
  deleteCertificateAuthority,
  deleteCertificateByName,
  getCertificateAuthority,
  getCertificateView,
  listCertificateAuthorityViews,
  listCertificateViews,
  listExpiringCertificateViews,
  renewCertificate,
  rotateCertificateAuthority,
} from '../../shared/commands/certificates.js';
import {
  type CertificateDocument,
  certificateDocument,
  createCertificateAuthorityBody,
  createCertificateBody,
  expiringWindowDays,
  parseCertificateDocument,
} from '../../shared/domain/certificate-schema.js';
import { httpApi, jsonRequest, multipartRequest, reply, routesOf } from '../../shared/http/api.js';
import {
  certificateAuthorityListView,
  certificateAuthorityView,
  certificateInfoView,
  certificateListView,
  createdCertificate,
  createdCertificateAuthority,
  expiringCertificateListView,
  renewedCertificate,
  rotatedCertificateAuthority,
} from '../../shared/http/api-schemas.js';
import { examples } from '../../shared/http/examples.js';

const route = routesOf('certificates');

/**
 * The fleet's certificate authorities and certificates (the reference's certificate API, with the
 * fields the SDK decodes), without ever returning a private key.
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
    summary: 'Delete a CA that signs no certificate still stored',
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteCertificateAuthority(param('name'));
      return reply.noContent();
    },
  }),
  route({
    method: 'POST',
    path: '/api/v3/certificates/ca/{name}/rotate',
    auth: 'admin',
    summary:
      'Rotate a CA fogbridge made: the new CA joins every trust file, leaves are reissued under it, then the old one leaves',
    responses: { 202: rotatedCertificateAuthority },
    handler: async ({ param }) => reply.json(202, await rotateCertificateAuthority(param('name'))),
  }),
  route({
    method: 'POST',
    path: '/api/v3/certificates',
    auth: 'admin',
    summary: 'Create a certificate signed by a CA fogbridge holds (or self-signed)',
    request: jsonRequest(createCertificateBody, { example: examples.certificate }),
    responses: { 201: createdCertificate },
    handler: async ({ body }) => reply.created(await createCertificate(body)),
  }),
  route({
    method: 'POST',
    path: '/api/v3/certificates/yaml',
    auth: 'admin',
    summary: 'Create a CA or a certificate from YAML (kind CertificateAuthority or Certificate)',
    request: multipartRequest<CertificateDocument>({
      field: 'certificate',
      document: certificateDocument,
      parse: parseCertificateDocument,
      example: examples.certificateYaml,
    }),
    responses: { 201: z.union([createdCertificate, createdCertificateAuthority]) },
    handler: async ({ body }) =>
      reply.created(
        body.kind === 'CertificateAuthority'
          ? await createCertificateAuthority(body.body)
          : await createCertificate(body.body),
      ),
  }),
  route({
    method: 'GET',
    path: '/api/v3/certificates',
    auth: 'viewer',
    summary: 'List CAs and certificates',
    responses: { 200: certificateListView },
    handler: async () => reply.ok({ certificates: await listCertificateViews() }),
  }),
  route({
    method: 'GET',
    path: '/api/v3/certificates/expiring',
    auth: 'viewer',
    summary: 'List what expires within `days` (default 30), soonest first',
    query: z.object({ days: expiringWindowDays.optional() }),
    responses: { 200: expiringCertificateListView },
    handler: async ({ queries }) =>
      reply.ok({
        certificates: await listExpiringCertificateViews((queries.days as number | undefined) ?? 30),
      }),
  }),
  route({
    method: 'GET',
    path: '/api/v3/certificates/{name}',
    auth: 'viewer',
    summary: 'Read a CA or a certificate (without its key)',
    responses: { 200: certificateInfoView },
    handler: async ({ param }) => reply.ok(await getCertificateView(param('name'))),
  }),
  route({
    method: 'DELETE',
    path: '/api/v3/certificates/{name}',
    auth: 'admin',
    summary: "Delete a certificate no agent's router or NATS server presents",
    responses: { 204: null },
    handler: async ({ param }) => {
      await deleteCertificateByName(param('name'));
      return reply.noContent();
    },
  }),
  route({
    method: 'POST',
    path: '/api/v3/certificates/{name}/renew',
    auth: 'admin',
    summary: 'Renew a certificate: a new key and serial, the same names and CA',
    responses: { 200: renewedCertificate },
    handler: async ({ param }) => reply.ok(await renewCertificate(param('name'))),
  }),
];

export const handler = httpApi(routes);
