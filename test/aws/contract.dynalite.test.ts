import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import { startFauxqs } from 'fauxqs';
import { defineContractSuite } from './contract-suite.js';

// The embedded runtime's pair: dynalite and fauxqs, both in this process.
defineContractSuite('dynalite+fauxqs', async () => {
  const dynamo = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((done) => dynamo.listen(0, '127.0.0.1', () => done()));
  const fauxqs = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
  return {
    dynamodbEndpoint: `http://127.0.0.1:${(dynamo.address() as AddressInfo).port}`,
    sqsEndpoint: fauxqs.address,
    stop: async () => {
      await fauxqs.stop();
      await new Promise<void>((done) => dynamo.close(() => done()));
    },
  };
});
